"""Command-line interface of the students' copy of the course: `python -m grader <command>`.

The commands are the course's student commands (grader/student/cli.py); the Makefile calls them.
"""

from grader.student.cli import main

if __name__ == "__main__":
    main()
