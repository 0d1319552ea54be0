"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): NLP from scratch: the char-RNN classifier and generator,
seq2seq translation with attention."""
import random

import numpy as np

from test_examples_programs import init_weights, run_both


# -- NLP from scratch --------------------------------------------------------------------------------------
ALL_LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ .,;'"
NAMES = {"Italian": ["Abandonato", "Rossi", "Bianchi"], "Scottish": ["Smith", "Brown", "MacDonald"],
         "Japanese": ["Abe", "Sato", "Suzuki"]}


def char_rnn_classification(T):
    """Classifying names with a character-level RNN: unicodeToAscii, one-hot letterToTensor/lineToTensor,
    the hand-made RNN (i2h over torch.cat((input, hidden), 1), LogSoftmax), NLLLoss, the manual
    p.data.add_(p.grad.data, alpha=-lr) update, categoryFromOutput by topk; then the newer version's
    nn.RNN reading hidden[0], clip_grad_norm_ and optim.SGD, and evaluate() under no_grad."""
    import unicodedata
    nn = T.nn
    n_letters, all_categories = len(ALL_LETTERS), list(NAMES)

    def unicodeToAscii(s):
        return "".join(c for c in unicodedata.normalize("NFD", s)
                       if unicodedata.category(c) != "Mn" and c in ALL_LETTERS)

    def letterToTensor(letter):
        tensor = T.zeros(1, n_letters)
        tensor[0][ALL_LETTERS.find(letter)] = 1
        return tensor

    def lineToTensor(line):
        tensor = T.zeros(len(line), 1, n_letters)
        for li, letter in enumerate(line):
            tensor[li][0][ALL_LETTERS.find(letter)] = 1
        return tensor

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(input_size + hidden_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, input, hidden):
            combined = T.cat((input, hidden), 1)
            hidden = T.tanh(self.i2h(combined))
            output = self.h2o(hidden)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return T.zeros(1, self.hidden_size)

    def categoryFromOutput(output):
        top_n, top_i = output.topk(1)
        category_i = top_i[0].item()
        return all_categories[category_i], category_i

    rnn = RNN(n_letters, 16, len(all_categories))
    init_weights(T, rnn, 50)
    criterion = nn.NLLLoss()
    out = {"ascii": unicodeToAscii("Ślusàrski"), "letter": letterToTensor("J").nonzero(),
           "line": lineToTensor("Jones").size()}
    losses = []
    for epoch in range(2):
        for category in all_categories:
            for line in NAMES[category]:
                category_tensor = T.tensor([all_categories.index(category)], dtype=T.long)
                line_tensor = lineToTensor(line)
                hidden = rnn.initHidden()
                rnn.zero_grad()
                for i in range(line_tensor.size()[0]):
                    output, hidden = rnn(line_tensor[i], hidden)
                loss = criterion(output, category_tensor)
                loss.backward()
                for p in rnn.parameters():
                    p.data.add_(p.grad.data, alpha=-0.05)
                losses.append(loss.item())
    out["losses"] = losses
    out["guess"] = categoryFromOutput(output)[1]

    class CharRNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.rnn = nn.RNN(input_size, hidden_size)
            self.h2o = nn.Linear(hidden_size, output_size)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, line_tensor):
            rnn_out, hidden = self.rnn(line_tensor)
            output = self.h2o(hidden[0])
            output = self.softmax(output)
            return output

    rnn = CharRNN(n_letters, 16, len(all_categories))
    init_weights(T, rnn, 51)
    rnn.train()
    optimizer = T.optim.SGD(rnn.parameters(), lr=0.15)
    batch_losses = []
    for epoch in range(2):
        rnn.zero_grad()
        batch_loss = 0
        for category in all_categories:
            for line in NAMES[category]:
                output = rnn(lineToTensor(line))
                batch_loss += criterion(output, T.tensor([all_categories.index(category)], dtype=T.long))
        batch_loss.backward()
        nn.utils.clip_grad_norm_(rnn.parameters(), 3)
        optimizer.step()
        optimizer.zero_grad()
        batch_losses.append(batch_loss.item() / 9)
    confusion = T.zeros(len(all_categories), len(all_categories))
    rnn.eval()
    with T.no_grad():
        for category in all_categories:
            for line in NAMES[category]:
                guess_i = categoryFromOutput(rnn(lineToTensor(line)))[1]
                confusion[all_categories.index(category)][guess_i] += 1
    for i in range(len(all_categories)):
        denom = confusion[i].sum()
        if denom > 0:
            confusion[i] = confusion[i] / denom
    out["batch_losses"], out["confusion"] = batch_losses, confusion
    return out


def test_char_rnn_classification():
    run_both(char_rnn_classification)


def char_rnn_generation(T):
    """Generating names with a character-level RNN: category + input + hidden concatenated into i2h/i2o,
    o2o over their concatenation, Dropout(0.1) (off in eval mode here), a summed per-letter NLLLoss with
    target_line_tensor.unsqueeze_(-1), torch.LongTensor targets, and sample() by topk."""
    nn = T.nn
    n_letters, all_categories = len(ALL_LETTERS) + 1, list(NAMES)
    n_categories = len(all_categories)

    class RNN(nn.Module):
        def __init__(self, input_size, hidden_size, output_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.i2h = nn.Linear(n_categories + input_size + hidden_size, hidden_size)
            self.i2o = nn.Linear(n_categories + input_size + hidden_size, output_size)
            self.o2o = nn.Linear(hidden_size + output_size, output_size)
            self.dropout = nn.Dropout(0.1)
            self.softmax = nn.LogSoftmax(dim=1)

        def forward(self, category, input, hidden):
            input_combined = T.cat((category, input, hidden), 1)
            hidden = self.i2h(input_combined)
            output = self.i2o(input_combined)
            output_combined = T.cat((hidden, output), 1)
            output = self.o2o(output_combined)
            output = self.dropout(output)
            output = self.softmax(output)
            return output, hidden

        def initHidden(self):
            return T.zeros(1, self.hidden_size)

    def categoryTensor(category):
        tensor = T.zeros(1, n_categories)
        tensor[0][all_categories.index(category)] = 1
        return tensor

    def inputTensor(line):
        tensor = T.zeros(len(line), 1, n_letters)
        for li in range(len(line)):
            tensor[li][0][ALL_LETTERS.find(line[li])] = 1
        return tensor

    def targetTensor(line):
        letter_indexes = [ALL_LETTERS.find(line[li]) for li in range(1, len(line))]
        letter_indexes.append(n_letters - 1)  # EOS
        return T.LongTensor(letter_indexes)

    rnn = RNN(n_letters, 24, n_letters)
    init_weights(T, rnn, 60)
    rnn.eval()  # the dropout draw differs between frameworks
    criterion = nn.NLLLoss()
    learning_rate = 0.0005
    losses = []
    for category in all_categories:
        for line in NAMES[category][:2]:
            category_tensor, input_line_tensor = categoryTensor(category), inputTensor(line)
            target_line_tensor = targetTensor(line)
            target_line_tensor.unsqueeze_(-1)
            hidden = rnn.initHidden()
            rnn.zero_grad()
            loss = T.Tensor([0])
            for i in range(input_line_tensor.size(0)):
                output, hidden = rnn(category_tensor, input_line_tensor[i], hidden)
                l = criterion(output, target_line_tensor[i])
                loss += l
            loss.backward()
            for p in rnn.parameters():
                p.data.add_(p.grad.data, alpha=-learning_rate)
            losses.append(loss.item() / input_line_tensor.size(0))

    def sample(category, start_letter="A", max_length=8):
        with T.no_grad():
            category_tensor = categoryTensor(category)
            input = inputTensor(start_letter)
            hidden = rnn.initHidden()
            output_name = start_letter
            for i in range(max_length):
                output, hidden = rnn(category_tensor, input[0], hidden)
                topv, topi = output.topk(1)
                topi = topi[0][0]
                if topi == n_letters - 1:
                    break
                else:
                    letter = ALL_LETTERS[topi]
                    output_name += letter
                input = inputTensor(letter)
            return output_name

    return {"losses": losses, "samples": [sample(c, s) for c in all_categories for s in "ABS"],
            "target": targetTensor("Abe")}


def test_char_rnn_generation():
    run_both(char_rnn_generation)


def seq2seq_translation(T):
    """Translation with a sequence to sequence network and attention: Embedding + GRU(batch_first) encoder,
    a decoder unrolled with teacher forcing (torch.empty(...).fill_(SOS_token), topk, squeeze(-1).detach(),
    torch.cat(decoder_outputs, dim=1), log_softmax), BahdanauAttention (Va(tanh(Wa(q) + Ua(k))),
    squeeze(2).unsqueeze(1), softmax, bmm), TensorDataset/RandomSampler/DataLoader batches, Adam and
    NLLLoss over view(-1, size)."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    SOS_token, EOS_token, MAX_LENGTH, device = 0, 1, 6, T.device("cpu")

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size, dropout_p=0.1):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size, batch_first=True)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, input):
            embedded = self.dropout(self.embedding(input))
            output, hidden = self.gru(embedded)
            return output, hidden

    class BahdanauAttention(nn.Module):
        def __init__(self, hidden_size):
            super().__init__()
            self.Wa = nn.Linear(hidden_size, hidden_size)
            self.Ua = nn.Linear(hidden_size, hidden_size)
            self.Va = nn.Linear(hidden_size, 1)

        def forward(self, query, keys):
            scores = self.Va(T.tanh(self.Wa(query) + self.Ua(keys)))
            scores = scores.squeeze(2).unsqueeze(1)
            weights = F.softmax(scores, dim=-1)
            context = T.bmm(weights, keys)
            return context, weights

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attention = BahdanauAttention(hidden_size)
            self.gru = nn.GRU(2 * hidden_size, hidden_size, batch_first=True)
            self.out = nn.Linear(hidden_size, output_size)
            self.dropout = nn.Dropout(dropout_p)

        def forward(self, encoder_outputs, encoder_hidden, target_tensor=None):
            batch_size = encoder_outputs.size(0)
            decoder_input = T.empty(batch_size, 1, dtype=T.long, device=device).fill_(SOS_token)
            decoder_hidden = encoder_hidden
            decoder_outputs, attentions = [], []
            for i in range(MAX_LENGTH):
                decoder_output, decoder_hidden, attn_weights = self.forward_step(
                    decoder_input, decoder_hidden, encoder_outputs)
                decoder_outputs.append(decoder_output)
                attentions.append(attn_weights)
                if target_tensor is not None:
                    decoder_input = target_tensor[:, i].unsqueeze(1)  # teacher forcing
                else:
                    _, topi = decoder_output.topk(1)
                    decoder_input = topi.squeeze(-1).detach()
            decoder_outputs = T.cat(decoder_outputs, dim=1)
            decoder_outputs = F.log_softmax(decoder_outputs, dim=-1)
            attentions = T.cat(attentions, dim=1)
            return decoder_outputs, decoder_hidden, attentions

        def forward_step(self, input, hidden, encoder_outputs):
            embedded = self.dropout(self.embedding(input))
            query = hidden.permute(1, 0, 2)
            context, attn_weights = self.attention(query, encoder_outputs)
            input_gru = T.cat((embedded, context), dim=2)
            output, hidden = self.gru(input_gru, hidden)
            output = self.out(output)
            return output, hidden, attn_weights

    rng = np.random.default_rng(70)
    n_pairs, in_words, out_words, hidden_size = 6, 12, 10, 16
    input_ids = np.zeros((n_pairs, MAX_LENGTH), dtype=np.int32)
    target_ids = np.zeros((n_pairs, MAX_LENGTH), dtype=np.int32)
    for idx in range(n_pairs):
        n = int(rng.integers(2, MAX_LENGTH))
        input_ids[idx, :n - 1], input_ids[idx, n - 1] = rng.integers(2, in_words, n - 1), EOS_token
        target_ids[idx, :n - 1], target_ids[idx, n - 1] = rng.integers(2, out_words, n - 1), EOS_token
    train_data = T.utils.data.TensorDataset(T.LongTensor(input_ids).to(device), T.LongTensor(target_ids).to(device))
    train_sampler = T.utils.data.SequentialSampler(train_data)
    train_dataloader = T.utils.data.DataLoader(train_data, sampler=train_sampler, batch_size=3)
    assert isinstance(T.utils.data.RandomSampler(train_data), T.utils.data.Sampler)
    encoder, decoder = EncoderRNN(in_words, hidden_size).to(device), AttnDecoderRNN(hidden_size, out_words).to(device)
    init_weights(T, encoder, 71)
    init_weights(T, decoder, 72)
    encoder.eval(), decoder.eval()  # dropout off: its draw differs between frameworks
    encoder_optimizer = optim.Adam(encoder.parameters(), lr=0.001)
    decoder_optimizer = optim.Adam(decoder.parameters(), lr=0.001)
    criterion = nn.NLLLoss()
    losses = []
    for epoch in range(1):
        total_loss = 0
        for data in train_dataloader:
            input_tensor, target_tensor = data
            encoder_optimizer.zero_grad()
            decoder_optimizer.zero_grad()
            encoder_outputs, encoder_hidden = encoder(input_tensor)
            decoder_outputs, _, _ = decoder(encoder_outputs, encoder_hidden, target_tensor)
            loss = criterion(decoder_outputs.view(-1, decoder_outputs.size(-1)), target_tensor.view(-1))
            loss.backward()
            encoder_optimizer.step()
            decoder_optimizer.step()
            total_loss += loss.item()
        losses.append(total_loss / len(train_dataloader))
    with T.no_grad():
        encoder_outputs, encoder_hidden = encoder(T.LongTensor(input_ids[:2]))
        decoder_outputs, decoder_hidden, decoder_attn = decoder(encoder_outputs, encoder_hidden)
        _, topi = decoder_outputs.topk(1)
        decoded_ids = topi.squeeze()
    return {"losses": losses, "decoded": decoded_ids, "attn": decoder_attn, "hidden": decoder_hidden}


def test_seq2seq_translation():
    run_both(seq2seq_translation)


def seq2seq_classic_attention(T):
    """The earlier seq2seq tutorial's one-sentence-at-a-time loop: encoder_outputs = torch.zeros(max_length,
    hidden) filled row by row, AttnDecoderRNN with attn = Linear(2h, max_length) over torch.cat((embedded[0],
    hidden[0]), 1), bmm of attn_weights.unsqueeze(0) by encoder_outputs.unsqueeze(0), attn_combine, teacher
    forcing chosen by random.random(), the loss summed per step and divided by target_length."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    SOS_token, EOS_token, max_length, hidden_size = 0, 1, 6, 12

    class EncoderRNN(nn.Module):
        def __init__(self, input_size, hidden_size):
            super().__init__()
            self.hidden_size = hidden_size
            self.embedding = nn.Embedding(input_size, hidden_size)
            self.gru = nn.GRU(hidden_size, hidden_size)

        def forward(self, input, hidden):
            embedded = self.embedding(input).view(1, 1, -1)
            output = embedded
            output, hidden = self.gru(output, hidden)
            return output, hidden

        def initHidden(self):
            return T.zeros(1, 1, self.hidden_size)

    class AttnDecoderRNN(nn.Module):
        def __init__(self, hidden_size, output_size, dropout_p=0.1, max_length=max_length):
            super().__init__()
            self.embedding = nn.Embedding(output_size, hidden_size)
            self.attn = nn.Linear(hidden_size * 2, max_length)
            self.attn_combine = nn.Linear(hidden_size * 2, hidden_size)
            self.dropout = nn.Dropout(dropout_p)
            self.gru = nn.GRU(hidden_size, hidden_size)
            self.out = nn.Linear(hidden_size, output_size)

        def forward(self, input, hidden, encoder_outputs):
            embedded = self.embedding(input).view(1, 1, -1)
            embedded = self.dropout(embedded)
            attn_weights = F.softmax(self.attn(T.cat((embedded[0], hidden[0]), 1)), dim=1)
            attn_applied = T.bmm(attn_weights.unsqueeze(0), encoder_outputs.unsqueeze(0))
            output = T.cat((embedded[0], attn_applied[0]), 1)
            output = self.attn_combine(output).unsqueeze(0)
            output = F.relu(output)
            output, hidden = self.gru(output, hidden)
            output = F.log_softmax(self.out(output[0]), dim=1)
            return output, hidden, attn_weights

    def train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer, criterion):
        encoder_hidden = encoder.initHidden()
        encoder_optimizer.zero_grad()
        decoder_optimizer.zero_grad()
        input_length, target_length = input_tensor.size(0), target_tensor.size(0)
        encoder_outputs = T.zeros(max_length, encoder.hidden_size)
        loss = 0
        for ei in range(input_length):
            encoder_output, encoder_hidden = encoder(input_tensor[ei], encoder_hidden)
            encoder_outputs[ei] = encoder_output[0, 0]
        decoder_input = T.tensor([[SOS_token]])
        decoder_hidden = encoder_hidden
        use_teacher_forcing = random.random() < 0.5
        for di in range(target_length):
            decoder_output, decoder_hidden, decoder_attention = decoder(decoder_input, decoder_hidden, encoder_outputs)
            loss += criterion(decoder_output, target_tensor[di])
            if use_teacher_forcing:
                decoder_input = target_tensor[di]
            else:
                topv, topi = decoder_output.topk(1)
                decoder_input = topi.squeeze().detach()
                if decoder_input.item() == EOS_token:
                    break
        loss.backward()
        encoder_optimizer.step()
        decoder_optimizer.step()
        return loss.item() / target_length

    encoder, decoder = EncoderRNN(9, hidden_size), AttnDecoderRNN(hidden_size, 8)
    init_weights(T, encoder, 73)
    init_weights(T, decoder, 74)
    decoder.eval()
    encoder_optimizer = optim.SGD(encoder.parameters(), lr=0.01)
    decoder_optimizer = optim.SGD(decoder.parameters(), lr=0.01)
    criterion = nn.NLLLoss()
    rng = np.random.default_rng(75)
    random.seed(1)
    losses = []
    for it in range(4):
        src = [int(v) for v in rng.integers(2, 9, 4)] + [EOS_token]
        tgt = [int(v) for v in rng.integers(2, 8, 3)] + [EOS_token]
        input_tensor = T.tensor(src, dtype=T.long).view(-1, 1)
        target_tensor = T.tensor(tgt, dtype=T.long).view(-1, 1)
        losses.append(train(input_tensor, target_tensor, encoder, decoder, encoder_optimizer, decoder_optimizer,
                            criterion))
    return {"losses": losses, "attn": decoder.attn.weight}


def test_seq2seq_classic_attention():
    run_both(seq2seq_classic_attention)
