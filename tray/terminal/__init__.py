"""The user's terminal, below the adapters that use it: raw mode, writes that finish, and
what a session records of the terminal it runs in."""
