"""The leaderboard: submissions re-scored on the server, stored as immutable records in SQL, shown in
web pages (one table per protocol), and exported as a static site.

Modules: ``db`` (schema and migrations), ``tokens`` (submitter tokens), ``bundle`` (what a submission
carries and its validation), ``rescoring`` (server-side re-scoring with the harness's scoring code),
``records`` (storing and reading submissions), ``tables`` (protocol tables, CSV/JSON), ``hooks`` (what a
protocol supplies: ``Protocol.extensions["leaderboard"]``), ``protocol_parts`` (the protocols' panels and
pooled figures, read through their hooks), ``pages`` (HTML), ``server`` (the web service), ``export``
(static copy), ``client`` (``harness submit``). No module here names a protocol: each protocol's part lives
in ``harness/protocols/<name>/leaderboard.py``.
"""
