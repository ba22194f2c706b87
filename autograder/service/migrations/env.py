"""Alembic's environment: the connection `database.migrate` passes in (config.attributes), else an
engine for the URL given with ``-x url=...`` when alembic is run by hand."""

from alembic import context

from autograder.service.database import make_engine, metadata

config = context.config


def run():
    conn = config.attributes.get("connection")
    if conn is not None:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()
        return
    url = context.get_x_argument(as_dictionary=True).get("url")
    if not url:
        raise SystemExit("give the database: alembic -c alembic.ini -x url=sqlite:///service.db upgrade head")
    engine = make_engine(url)
    with engine.begin() as conn:
        context.configure(connection=conn, target_metadata=metadata, render_as_batch=True)
        with context.begin_transaction():
            context.run_migrations()


run()
