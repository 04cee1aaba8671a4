"""Where sessions live beyond a single file: branches and folders that hold many."""
