"""The two ways an audit's input can be bad: the folder is not a run at all (``Unauditable``: exit 2), or
one file cannot be read as what it must be (``Unreadable``: the check that needed it fails, naming it)."""


class Unauditable(Exception):
    """Not a run folder at all (exit 2)."""


class Unreadable(Exception):
    def __init__(self, file, problem):
        self.file = str(file)
        super().__init__(f"{file}: {problem}")
