"""Hooks: an Airflow connection -> what a cdc-replay job needs from it, handed over out of band (environment),
never as a command-line argument."""
