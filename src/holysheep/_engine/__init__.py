"""The batch engine: admission, limits, work queue, attempts and delivery, driven over a `Sender`.

It never imports a client: the clients implement the `Sender` protocol (`sender.py`) and call `run.py`.
"""
