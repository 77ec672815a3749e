"""Network definitions the workloads benchmark (torchvision provides the 2D classifiers)."""
