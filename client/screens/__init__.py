"""The screens of the client: solo, lobby, waiting room, race, results, watch."""
