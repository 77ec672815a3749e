"""Data sources for the workloads: synthetic tensors, JPEG image folders, sample-data writers."""
