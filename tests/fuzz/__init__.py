"""Fuzzing the command line and the schema parser (Hypothesis; see campaign.py for long runs)."""
