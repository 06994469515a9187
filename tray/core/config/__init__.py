"""Pure: the user's config.toml read into settings, with errors that name the key."""
