# The built-in tasks, one module each, written against the task interface (docs/tasks.md): a
# board imports only the task it runs (microrl.task.Env steps any of them).
