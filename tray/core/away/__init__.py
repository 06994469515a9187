"""Pure: whether the user is at the desk, from the idle and lock sources."""
