"""The leaderboard: submissions re-scored on the server, stored as immutable records in SQL, shown in
web pages (one table per protocol), and exported as a static site.

Modules: ``db`` (schema and migrations), ``tokens`` (submitter tokens), ``bundle`` (what a submission
carries and its validation), ``rescoring`` (server-side re-scoring with the harness's scoring code),
``records`` (storing and reading submissions), ``tables`` (protocol tables, CSV/JSON), ``vista_pool``
(the cross-model audit over all submitted models), ``pages`` (HTML), ``server`` (the web service),
``export`` (static copy), ``client`` (``harness submit``).
"""
