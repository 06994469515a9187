"""The state directory and the user's files: the sessions' store and its cache, the
directory watcher, the session feed of ``tray status --watch``, the app's lock and marks,
the logs, the config file, and where all of them live (:class:`Environment`)."""
