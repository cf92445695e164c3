"""`holodesk replay`: re-execute a recording's actions and compare the screens step by step."""
