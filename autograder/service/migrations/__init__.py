"""Alembic migrations of the service's database (env.py, versions/): `store.migrate` runs them."""
