"""Execution of a campaign: sweeps over points, locally or as SLURM jobs, and the ledger."""
