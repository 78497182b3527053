"""``harness view``: a local web viewer of run folders and audit folders.

``catalog`` finds the runs and audits under the folders given; ``sample_index`` keeps, per run, a SQLite
index of its samples files (byte offsets and the columns pages filter and sort on), in a cache folder;
``images`` finds a sample's images by the digests it records, in the run's dataset; ``pages`` renders
Jinja2 templates (autoescaped) and ``app`` serves them with FastAPI on loopback. Nothing in a run folder
is executed: files are read as data, every string reaches a page escaped, and images are decoded and
re-encoded before they are served.
"""
