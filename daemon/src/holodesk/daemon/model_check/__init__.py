"""`holodesk model check`: does a model answer the way its dialect expects?

Holotron-12B's prompt and action format is not published, so a dialect is an
informed guess until a run on the real checkpoint confirms it. The check, for
a GPU host with the checkpoint:

(a) renders the model's OWN chat template with the dialect's messages for one
    navigation step and reports the prompt (head, tail, tokens), the image
    token estimate against the processor's real count, and any problem (no
    chat template, no image placeholder, list-of-parts content or the system
    role rejected);
(b) runs one localization and one navigation step on a bundled screenshot
    whose target box is known, through the real ModelPolicy and engine;
(c) reports whether each answer parses and where its click lands relative to
    the target, and succeeds only if both parse and both clicks land inside.

The `holodesk` CLI (client distribution) finds this command through the
`holodesk.commands` entry point; nothing heavy is imported until it runs.
"""
