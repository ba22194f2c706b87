"""The grading web service, ``seqgrader serve``: students upload, warm grading processes grade,
everyone sees their own reports, instructors the whole class (docs/service.md).

    cli.py         `serve` and `tokens`: the database, the roster, the grader, uvicorn
    app.py         the HTTP layer: routes that parse, authorise and answer (create_app)
    auth.py        who is asking: User, the roster's tokens and sign-in cookie, the one dependency
                   every protected route declares (current_user), the forms' token, the seam for
                   JupyterHub sign-in (an authenticator object; hub.py)
    database.py      the tables (people, keys, submissions, results), the queue with its lease, and
                     the attempts, in portable SQL (SQLite, PostgreSQL)
    migrations/      Alembic's environment and one file per schema change, run on start
    grading_loop.py  the grading threads: claim a queued submission, grade it on a LocalPool (or
                     Dask), write the result once; what a dead process left is queued again
    views.py         what a response may show of a report (the course's feedback rules) and the
                     checks of an uploaded file
    classview.py     the instructor's view: the class so far, the dashboard of the latest reports
    ../templates/    the pages (Jinja2, escaped by default, one base with the reports), Chinese
                     first with English alongside
    alembic.ini      Alembic's settings, for running it by hand
"""
