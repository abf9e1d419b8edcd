"""Support bundles: gathered in one round trip per host, analyzed offline."""
