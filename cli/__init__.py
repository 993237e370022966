"""The ``foursquare`` command: one entry point whose subcommands live with what they run."""
