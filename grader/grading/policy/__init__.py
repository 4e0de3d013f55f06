"""Policy: lateness, the instructor's overrides, and the grades they make of the facts."""
