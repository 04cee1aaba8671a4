"""The replay core: the conversation model, parameters, the context a strategy acts on, its records and words."""
