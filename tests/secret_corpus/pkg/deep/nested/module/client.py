class Client:
    """A client deep in the tree (test fixture)."""

    def __init__(self):
        self.token = "{{NESTED_GITHUB}}"
        self.api_key = "{{NESTED_API_KEY}}"
