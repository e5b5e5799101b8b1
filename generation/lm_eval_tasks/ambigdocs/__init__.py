"""The lm-eval task folder (a package only so that installing the toolkit ships it)."""
