"""Coordinating the instances that serve a workspace: one interface, a file and a Redis backend."""
