"""The data set and the metric on the Hugging Face Hub: export, push a split, publish the metric."""
