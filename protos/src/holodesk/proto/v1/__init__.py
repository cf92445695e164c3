"""Generated from protos/holodesk/v1; do not edit. See tools/gen_protos.py."""
