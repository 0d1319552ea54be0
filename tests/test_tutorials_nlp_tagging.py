"""Programs shaped like the official PyTorch tutorials, run on real torch and on `tidal.compat` from the same
NumPy-made weights and data (see tests/tutorial_data.py): Word embeddings (n-gram and CBOW), the LSTM part-of-speech
tagger, the Bi-LSTM CRF."""


from test_examples_programs import init_weights, run_both
from tutorial_data import uniform


# -- Deep Learning for NLP with PyTorch ----------------------------------------------------------------------
TEST_SENTENCE = """When forty winters shall besiege thy brow, And dig deep trenches in thy beauty's field,
Thy youth's proud livery so gazed on now, Will be a totter'd weed of small worth held""".split()


def word_embeddings(T):
    """N-gram language model: nn.Embedding looked up with torch.tensor([word_to_ix["hello"]], dtype=torch.long),
    embeds.view((1, -1)), relu, log_softmax, NLLLoss, SGD, total_loss += loss.item(); the embedding row of
    one word afterwards; then CBOW summing its context embeddings."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    CONTEXT_SIZE, EMBEDDING_DIM = 2, 6
    ngrams = [([TEST_SENTENCE[i - j - 1] for j in range(CONTEXT_SIZE)], TEST_SENTENCE[i])
              for i in range(CONTEXT_SIZE, len(TEST_SENTENCE))]
    vocab = sorted(set(TEST_SENTENCE))
    word_to_ix = {word: i for i, word in enumerate(vocab)}

    word_to_ix2 = {"hello": 0, "world": 1}
    embeds = nn.Embedding(2, 5)
    init_weights(T, embeds, 80)
    lookup_tensor = T.tensor([word_to_ix2["hello"]], dtype=T.long)
    hello_embed = embeds(lookup_tensor)

    class NGramLanguageModeler(nn.Module):
        def __init__(self, vocab_size, embedding_dim, context_size):
            super().__init__()
            self.embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.linear1 = nn.Linear(context_size * embedding_dim, 32)
            self.linear2 = nn.Linear(32, vocab_size)

        def forward(self, inputs):
            embeds = self.embeddings(inputs).view((1, -1))
            out = F.relu(self.linear1(embeds))
            out = self.linear2(out)
            log_probs = F.log_softmax(out, dim=1)
            return log_probs

    losses = []
    loss_function = nn.NLLLoss()
    model = NGramLanguageModeler(len(vocab), EMBEDDING_DIM, CONTEXT_SIZE)
    init_weights(T, model, 81)
    optimizer = optim.SGD(model.parameters(), lr=0.001)
    for epoch in range(2):
        total_loss = 0
        for context, target in ngrams:
            context_idxs = T.tensor([word_to_ix[w] for w in context], dtype=T.long)
            model.zero_grad()
            log_probs = model(context_idxs)
            loss = loss_function(log_probs, T.tensor([word_to_ix[target]], dtype=T.long))
            loss.backward()
            optimizer.step()
            total_loss += loss.item()
        losses.append(total_loss)

    class CBOW(nn.Module):
        def __init__(self, vocab_size, embedding_dim):
            super().__init__()
            self.embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.linear = nn.Linear(embedding_dim, vocab_size)

        def forward(self, inputs):
            return F.log_softmax(self.linear(self.embeddings(inputs).sum(dim=0, keepdim=True)), dim=-1)

    def make_context_vector(context, word_to_ix):
        idxs = [word_to_ix[w] for w in context]
        return T.tensor(idxs, dtype=T.long)

    data = [([TEST_SENTENCE[i - 2], TEST_SENTENCE[i - 1], TEST_SENTENCE[i + 1], TEST_SENTENCE[i + 2]],
             TEST_SENTENCE[i]) for i in range(2, len(TEST_SENTENCE) - 2)]
    cbow = CBOW(len(vocab), EMBEDDING_DIM)
    init_weights(T, cbow, 82)
    optimizer = optim.SGD(cbow.parameters(), lr=0.01)
    cbow_loss = 0.0
    for context, target in data:
        optimizer.zero_grad()
        loss = loss_function(cbow(make_context_vector(context, word_to_ix)), T.tensor([word_to_ix[target]]))
        loss.backward()
        optimizer.step()
        cbow_loss += loss.item()
    return {"hello": hello_embed, "losses": losses, "beauty": model.embeddings.weight[word_to_ix["thy"]],
            "cbow": cbow_loss, "cbow_grad": cbow.embeddings.weight.grad}


def test_word_embeddings():
    run_both(word_embeddings)


def lstm_tagger(T):
    """Sequence models and LSTMs: stepping nn.LSTM one element at a time with a (h, c) tuple, then the whole
    sequence at once; the LSTMTagger (embeds.view(len(sentence), 1, -1), hidden2tag over
    lstm_out.view(len(sentence), -1), log_softmax), NLLLoss and SGD(lr=0.1), scores before/after under
    no_grad."""
    nn, F, optim = T.nn, T.nn.functional, T.optim
    lstm = nn.LSTM(3, 3)
    init_weights(T, lstm, 90)
    seq = uniform((5, 1, 3), 91)
    inputs = [T.from_numpy(seq[i]) for i in range(5)]
    hidden = (T.from_numpy(uniform((1, 1, 3), 92)), T.from_numpy(uniform((1, 1, 3), 93)))
    for i in inputs:
        out, hidden = lstm(i.view(1, 1, -1), hidden)
    step_out = [out, hidden[0], hidden[1]]
    inputs = T.cat(inputs).view(len(inputs), 1, -1)
    hidden = (T.from_numpy(uniform((1, 1, 3), 92)), T.from_numpy(uniform((1, 1, 3), 93)))
    out, hidden = lstm(inputs, hidden)

    def prepare_sequence(seq, to_ix):
        idxs = [to_ix[w] for w in seq]
        return T.tensor(idxs, dtype=T.long)

    training_data = [("The dog ate the apple".split(), ["DET", "NN", "V", "DET", "NN"]),
                     ("Everybody read that book".split(), ["NN", "V", "DET", "NN"])]
    word_to_ix = {}
    for sent, tags in training_data:
        for word in sent:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"DET": 0, "NN": 1, "V": 2}

    class LSTMTagger(nn.Module):
        def __init__(self, embedding_dim, hidden_dim, vocab_size, tagset_size):
            super().__init__()
            self.hidden_dim = hidden_dim
            self.word_embeddings = nn.Embedding(vocab_size, embedding_dim)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim)
            self.hidden2tag = nn.Linear(hidden_dim, tagset_size)

        def forward(self, sentence):
            embeds = self.word_embeddings(sentence)
            lstm_out, _ = self.lstm(embeds.view(len(sentence), 1, -1))
            tag_space = self.hidden2tag(lstm_out.view(len(sentence), -1))
            tag_scores = F.log_softmax(tag_space, dim=1)
            return tag_scores

    model = LSTMTagger(6, 6, len(word_to_ix), len(tag_to_ix))
    init_weights(T, model, 94)
    loss_function = nn.NLLLoss()
    optimizer = optim.SGD(model.parameters(), lr=0.1)
    with T.no_grad():
        before = model(prepare_sequence(training_data[0][0], word_to_ix))
    for epoch in range(4):
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = prepare_sequence(tags, tag_to_ix)
            tag_scores = model(sentence_in)
            loss = loss_function(tag_scores, targets)
            loss.backward()
            optimizer.step()
    with T.no_grad():
        after = model(prepare_sequence(training_data[0][0], word_to_ix))
    return {"step": step_out, "out": out, "hidden": list(hidden), "before": before, "after": after,
            "loss": loss.item()}


def test_lstm_tagger():
    run_both(lstm_tagger)


def bilstm_crf(T):
    """Advanced: Making Dynamic Decisions and the Bi-LSTM CRF: argmax via torch.max(vec, 1) and .item(),
    log_sum_exp with view(1, -1).expand, transitions as an nn.Parameter written through .data[...] = -10000,
    the forward algorithm over torch.full((1, n), -10000.) with alphas_t appended as view(1) tensors and
    torch.cat, _score_sentence indexing transitions[tags[i + 1], tags[i]], Viterbi decoding with
    backpointers, neg_log_likelihood trained with SGD(weight_decay=1e-4)."""
    nn, optim = T.nn, T.optim
    START_TAG, STOP_TAG, EMBEDDING_DIM, HIDDEN_DIM = "<START>", "<STOP>", 5, 4

    def argmax(vec):
        _, idx = T.max(vec, 1)
        return idx.item()

    def prepare_sequence(seq, to_ix):
        idxs = [to_ix[w] for w in seq]
        return T.tensor(idxs, dtype=T.long)

    def log_sum_exp(vec):
        max_score = vec[0, argmax(vec)]
        max_score_broadcast = max_score.view(1, -1).expand(1, vec.size()[1])
        return max_score + T.log(T.sum(T.exp(vec - max_score_broadcast)))

    class BiLSTM_CRF(nn.Module):
        def __init__(self, vocab_size, tag_to_ix, embedding_dim, hidden_dim):
            super().__init__()
            self.embedding_dim, self.hidden_dim = embedding_dim, hidden_dim
            self.vocab_size, self.tag_to_ix, self.tagset_size = vocab_size, tag_to_ix, len(tag_to_ix)
            self.word_embeds = nn.Embedding(vocab_size, embedding_dim)
            self.lstm = nn.LSTM(embedding_dim, hidden_dim // 2, num_layers=1, bidirectional=True)
            self.hidden2tag = nn.Linear(hidden_dim, self.tagset_size)
            self.transitions = nn.Parameter(T.randn(self.tagset_size, self.tagset_size))
            init_weights(T, self, 100)
            self.transitions.data[tag_to_ix[START_TAG], :] = -10000
            self.transitions.data[:, tag_to_ix[STOP_TAG]] = -10000
            self.hidden = self.init_hidden()

        def init_hidden(self):  # torch.randn in the tutorial: the same numbers for both frameworks here
            return (T.from_numpy(uniform((2, 1, self.hidden_dim // 2), 101)),
                    T.from_numpy(uniform((2, 1, self.hidden_dim // 2), 102)))

        def _forward_alg(self, feats):
            init_alphas = T.full((1, self.tagset_size), -10000.)
            init_alphas[0][self.tag_to_ix[START_TAG]] = 0.
            forward_var = init_alphas
            for feat in feats:
                alphas_t = []
                for next_tag in range(self.tagset_size):
                    emit_score = feat[next_tag].view(1, -1).expand(1, self.tagset_size)
                    trans_score = self.transitions[next_tag].view(1, -1)
                    next_tag_var = forward_var + trans_score + emit_score
                    alphas_t.append(log_sum_exp(next_tag_var).view(1))
                forward_var = T.cat(alphas_t).view(1, -1)
            terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
            return log_sum_exp(terminal_var)

        def _get_lstm_features(self, sentence):
            self.hidden = self.init_hidden()
            embeds = self.word_embeds(sentence).view(len(sentence), 1, -1)
            lstm_out, self.hidden = self.lstm(embeds, self.hidden)
            lstm_out = lstm_out.view(len(sentence), self.hidden_dim)
            return self.hidden2tag(lstm_out)

        def _score_sentence(self, feats, tags):
            score = T.zeros(1)
            tags = T.cat([T.tensor([self.tag_to_ix[START_TAG]], dtype=T.long), tags])
            for i, feat in enumerate(feats):
                score = score + self.transitions[tags[i + 1], tags[i]] + feat[tags[i + 1]]
            score = score + self.transitions[self.tag_to_ix[STOP_TAG], tags[-1]]
            return score

        def _viterbi_decode(self, feats):
            backpointers = []
            init_vvars = T.full((1, self.tagset_size), -10000.)
            init_vvars[0][self.tag_to_ix[START_TAG]] = 0
            forward_var = init_vvars
            for feat in feats:
                bptrs_t, viterbivars_t = [], []
                for next_tag in range(self.tagset_size):
                    next_tag_var = forward_var + self.transitions[next_tag]
                    best_tag_id = argmax(next_tag_var)
                    bptrs_t.append(best_tag_id)
                    viterbivars_t.append(next_tag_var[0][best_tag_id].view(1))
                forward_var = (T.cat(viterbivars_t) + feat).view(1, -1)
                backpointers.append(bptrs_t)
            terminal_var = forward_var + self.transitions[self.tag_to_ix[STOP_TAG]]
            best_tag_id = argmax(terminal_var)
            path_score = terminal_var[0][best_tag_id]
            best_path = [best_tag_id]
            for bptrs_t in reversed(backpointers):
                best_tag_id = bptrs_t[best_tag_id]
                best_path.append(best_tag_id)
            start = best_path.pop()
            assert start == self.tag_to_ix[START_TAG]
            best_path.reverse()
            return path_score, best_path

        def neg_log_likelihood(self, sentence, tags):
            feats = self._get_lstm_features(sentence)
            forward_score = self._forward_alg(feats)
            gold_score = self._score_sentence(feats, tags)
            return forward_score - gold_score

        def forward(self, sentence):
            lstm_feats = self._get_lstm_features(sentence)
            score, tag_seq = self._viterbi_decode(lstm_feats)
            return score, tag_seq

    training_data = [("the wall street journal reported today that apple corporation made money".split(),
                      "B I I I O O O B I O O".split()),
                     ("georgia tech is a university in georgia".split(), "B I O O O O B".split())]
    word_to_ix = {}
    for sentence, tags in training_data:
        for word in sentence:
            if word not in word_to_ix:
                word_to_ix[word] = len(word_to_ix)
    tag_to_ix = {"B": 0, "I": 1, "O": 2, START_TAG: 3, STOP_TAG: 4}
    model = BiLSTM_CRF(len(word_to_ix), tag_to_ix, EMBEDDING_DIM, HIDDEN_DIM)
    optimizer = optim.SGD(model.parameters(), lr=0.01, weight_decay=1e-4)
    with T.no_grad():
        precheck_sent = prepare_sequence(training_data[0][0], word_to_ix)
        before = model(precheck_sent)
    losses = []
    for epoch in range(1):
        for sentence, tags in training_data:
            model.zero_grad()
            sentence_in = prepare_sequence(sentence, word_to_ix)
            targets = T.tensor([tag_to_ix[t] for t in tags], dtype=T.long)
            loss = model.neg_log_likelihood(sentence_in, targets)
            loss.backward()
            optimizer.step()
            losses.append(loss.item())
    with T.no_grad():
        after = model(precheck_sent)
    return {"before": list(before), "after": list(after), "losses": losses, "transitions": model.transitions}


def test_bilstm_crf():
    run_both(bilstm_crf)
