"""A module that fails on import with something other than ImportError, for the ``connector.class`` tests."""

raise RuntimeError("this module cannot be imported")
