"""The OCR-grounded CPU baseline policy: reads the screen with Tesseract and acts on
the UI text a task names, in the same action dialect as the model.

Modules, one job each: preprocess (image for OCR), tesseract (run the CLI), reader
(word boxes and lines), matching (find a phrase), instructions (the task language),
fields (which input belongs to a label), progress (plan position from the
session history), planner (next step -> holo JSON text), policy (the Policy the
daemon runs, registered as "ocr").
"""
