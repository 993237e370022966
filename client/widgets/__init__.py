"""The widgets every screen is built from."""
