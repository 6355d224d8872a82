"""The worked examples of the source tutorials, as data."""

DEFAULT_SENTENCE = "I am going to play"
CAT_SAT = "The cat sat on the mat"

# "Playing Outside": the source gives q, k and v directly (d_k = 4).
PLAYING_OUTSIDE_TOKENS = ("Playing", "Outside")
PLAYING_OUTSIDE_Q = ((0.212, 0.04, 0.63, 0.36), (0.1, 0.14, 0.86, 0.77))
PLAYING_OUTSIDE_K = ((0.31, 0.84, 0.963, 0.57), (0.45, 0.94, 0.73, 0.58))
PLAYING_OUTSIDE_V = ((0.36, 0.83, 0.1, 0.38), (0.31, 0.36, 0.19, 0.72))

# Softmax temperature (source 003): diffused at scale 1, almost one-hot at scale 100.
TEMPERATURE_LOGITS = (0.1, 0.4, -0.9, 0.02, 0.35, -0.62)

# The Masking view's default batch: sentences of different lengths, separated by "|".
MASKING_SENTENCES = "The cat sat on the mat | I am going to play | Money goes into the bank every month"

# The batch example: B = 6 sentences of T = 8 tokens, C = 32, head size d = 16.
BATCH_SENTENCES = (
    "the cat sat on the mat all day",
    "I am going to play outside with friends",
    "money goes into the bank every single month",
    "we sat on the river bank at dusk",
    "the street was too crowded for the animal",
    "attention lets every word look at the others",
)
BATCH_D_MODEL = 32
BATCH_D_K = 16

# Coreference (source 002): "it" is the animal when tired, the street when crowded.
COREFERENCE_SENTENCES = (
    "The animal didn't cross the street because it was too tired",
    "The animal didn't cross the street because it was too crowded",
)
COREFERENCE_WORDS = ("it", "animal", "street")  # the pronoun, then the two words it may refer to

# Static vs contextual embeddings (source 002): one word, several meanings.
CONTEXT_WORD = "bank"
CONTEXT_SENTENCES = ("I deposited money at the bank", "We sat on the river bank", "The bank approved my loan")

# Pairs of sentences that say the same thing in other words, and sentences about something else: the set the Real
# model view measures MiniLM's sentence embeddings on (does each sentence's nearest other sentence stay its pair?).
PARAPHRASE_PAIRS = (
    ("A man is playing a guitar.", "Someone is strumming an acoustic guitar."),
    ("The cat is sleeping on the sofa.", "A kitten naps on the couch."),
    ("It is raining heavily in the city today.", "There is a downpour in town this afternoon."),
    ("She bought a new car last week.", "Last week she purchased a brand-new vehicle."),
    ("The children are playing football in the park.", "Kids kick a ball around on the grass."),
    ("The stock market fell sharply on Monday.", "Share prices dropped steeply at the start of the week."),
)
UNRELATED_SENTENCES = (  # each shares words with a pair, not its meaning: a near miss for a poor embedding
    "A man is playing the piano on stage.",
    "The dog is sleeping on the kitchen floor.",
    "It is sunny in the city today.",
    "She sold her old bike last week.",
)

# Sentences of different lengths, padded into one batch by the Real model view (its padding and causal sections).
PADDED_SENTENCES = (
    "The cat sat.",
    "A much longer sentence about the cat that sat on the warm mat all afternoon.",
    "Dogs bark at night.",
)
