"""Where a ping goes: the desktop's notification server (with its activation tokens),
and forwarding through Apprise while the user is away."""
