"""The repair modes, one module each, named after what they tolerate (design.md "Repair modes")."""
