"""Make tests/data/torch_text_embedding_mean.onnx: a small text classifier as torch exports it (nn.Embedding over
int64 token ids [1, 12] -> mean over the tokens -> nn.Linear to 4 classes), random weights from a fixed seed,
torch.onnx's TorchScript exporter at opset 17. Run with /work/torch-venv/bin/python (torch 2.14.1)."""
import sys

import torch


class TextClassifier(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = torch.nn.Embedding(100, 16)
        self.fc = torch.nn.Linear(16, 4)

    def forward(self, ids):
        return self.fc(self.embed(ids).mean(dim=1))


torch.manual_seed(0)
model = TextClassifier().eval()
ids = torch.randint(0, 100, (1, 12), dtype=torch.int64)
torch.onnx.export(model, (ids,), sys.argv[1] if len(sys.argv) > 1 else "tests/data/torch_text_embedding_mean.onnx",
                  input_names=["ids"], output_names=["logits"], opset_version=17, dynamo=False)
