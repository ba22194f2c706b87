"""Alembic migrations of the service's database (env.py, versions/): `database.migrate` runs them."""
