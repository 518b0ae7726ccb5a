"""The command line of the theory (`giantstep curve`, `giantstep hermite`) and the argparse helpers
every giantstep command shares (exit 2 and one line on bad input, --version, list parsing)."""
