"""End-to-end tests: the real host CLIs, offline against loopback stubs (`stubs/`).

Each host has a folder with its e2e test and its recorded fixtures; this file puts `tests/e2e`
on the import path so they can import the stubs.
"""
