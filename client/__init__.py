"""The terminal client: race on a server, watch races, practise solo, and send bots.

``foursquare play``, ``watch``, ``solo`` and ``bot`` start it (see ``cli/client_commands.py``);
``docs/architecture.md`` describes how it is put together.
"""
