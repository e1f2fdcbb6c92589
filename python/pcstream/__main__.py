"""``python -m pcstream`` runs the command line."""

from pcstream.cli import main

if __name__ == "__main__":
    main()
