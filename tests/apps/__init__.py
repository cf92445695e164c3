"""Small GUI apps the tests drive."""
