"""Retriever adapters: the protocol, validation, built-in retrievers and integrations."""
