"""Reads damage, decides, acts: scan (every byte accounted for), plan (a mode's decisions, printable
as a dry run), apply (journaled, crash-safe, quarantined) and undo."""
