"""Input: params files read strictly, and the typed configuration of one run."""
