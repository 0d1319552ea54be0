"""Row kernels: softmax, layer norm, nll_loss, attention and CTC as one kernel each way."""
