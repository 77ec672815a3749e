"""Analysis over records: comparisons, intervals, verdicts, references, regressions, fleets."""
