"""The interactive session: ``swarm run`` with no ``-p``, a terminal chat with a lead agent.

Layers: ``desk`` holds the questions waiting for the person (teammates'
permission and plan requests, the lead's own tool calls); ``chat`` runs the
lead's turns on a worker thread and follows its team; ``view`` turns what
happens into lines; ``terminal`` is the prompt_toolkit front end (and a
plain-lines one when stdin is not a terminal); ``sessions`` stores each
session's transcript and the prompt history under the home.
"""
