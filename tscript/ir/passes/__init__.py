"""Graph passes, one per file (DESIGN.md "The IR")."""
