"""``wf console``: an operator console in the browser over a durable store
(docs/console.md).

A Starlette application with Jinja2 templates (autoescaped) and no script: each page
is a module (``instances``, ``instance``, ...), each action goes through the durable
client (``wflang.durable.client``), the code behind ``wf ops`` and the other commands.
Starlette, Jinja2 and uvicorn are an optional dependency: the ``console`` extra.
"""
