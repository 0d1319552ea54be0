"""MNIST-style CNN on synthetic 1x28x28 images fed through a DataLoader."""
import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

from _common import init_params, report


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 4, 3, 1)
        self.conv2 = nn.Conv2d(4, 8, 3, 1)
        self.dropout = nn.Dropout(0.0)
        self.fc1 = nn.Linear(8 * 5 * 5, 32)
        self.fc2 = nn.Linear(32, 10)

    def forward(self, x):
        x = F.relu(self.conv1(x))
        x = F.max_pool2d(x, 2)
        x = F.relu(self.conv2(x))
        x = F.max_pool2d(x, 2)
        x = torch.flatten(x, 1)
        x = self.dropout(F.relu(self.fc1(x)))
        return F.log_softmax(self.fc2(x), dim=1)


def make_images(rng, n):
    """Digits as class-dependent blobs plus noise, so the task is learnable."""
    labels = rng.integers(0, 10, size=n)
    images = rng.normal(0.0, 0.3, size=(n, 1, 28, 28))
    for i, label in enumerate(labels):
        r, c = 3 + 2 * (label // 5) * 5, 2 + 5 * (label % 5)
        images[i, 0, r:r + 8, c:c + 5] += 1.0
    return images.astype(np.float32), labels.astype(np.int64)


torch.manual_seed(0)
images, labels = make_images(np.random.default_rng(2), 96)
train_set = TensorDataset(torch.from_numpy(images), torch.from_numpy(labels))
train_loader = DataLoader(train_set, batch_size=16, shuffle=False)

model = Net()
init_params(model)
optimizer = optim.Adam(model.parameters(), lr=3e-3)

losses = []
for epoch in range(2):
    model.train()
    for batch_idx, (data, target) in enumerate(train_loader):
        optimizer.zero_grad()
        output = model(data)
        loss = F.nll_loss(output, target)
        loss.backward()
        optimizer.step()
        losses.append(loss.item())

model.eval()
correct = 0
with torch.no_grad():
    for data, target in train_loader:
        pred = model(data).argmax(dim=1, keepdim=True)
        correct += pred.eq(target.view_as(pred)).sum().item()
print(f"accuracy {correct}/{len(train_set)}")
report(losses, correct=correct)
