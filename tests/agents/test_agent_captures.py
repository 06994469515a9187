"""The agents' captures in tests/data/agents are the bytes that were measured.

The rules of each agent, and their notes, rest on what these hold, counted when each was
recorded (see the README there): the prompt's and the question's words each drawn in one
piece and how often, the titles, no bell and no notification. The tests beside this one
feed them through tray's scanner and each agent's rules; this one says a capture
replaced must be measured again.
"""

from __future__ import annotations

import hashlib

from helpers.data import DATA

AGENTS = DATA / "agents"
SHA256 = {
    "aider-approve.bin": "7e485c34e0159d7d69d3435be5ecf145c0ed118d57ccddf72b50b34fc10ad2e3",
    "aider-deny.bin": "f6a39ea7348d9b01209861f3a228feab9150d5ba32c37af02a48cc0e047e29d0",
    "aider-error.bin": "743988d70ed3484f2c5f48cc4f76f2b7f05c87e8c943c85bcfdc3f5147e70e11",
    "aider-question.bin": "66dda736aef1121bf77e1444c9fac206e7bc36de5a7fcbed9f3b7766d99101c3",
    "copilot-approve.bin": "4581ecb0669774a0ff1a121858a0b48e3ab1d344afe3a9896993e41fed3ce24a",
    "copilot-deny.bin": "a00b0c1c6ba8861a9ef1e4b46ca06e62eabd762ba893f78ca57d9a1007ef9361",
    "copilot-error.bin": "38915300edc1729f80e804e29dea095ca3b9a9e1344998b7353e97ce024a8a6a",
    "copilot-question.bin": "5a6a87ec9d64c775e88aaa4acbc6a626ee0d228a47f41dbd5b8938ed6e8aa5e9",
    "gemini-approve.bin": "468233df1dbd044f6c5d00035b62bdcbddd3bec88fbf124cea547f3a14b8f4f5",
    "gemini-deny.bin": "41a24178dc75ff43b10c6eb9aed4776db715ea133d15980640575d7b0af426b0",
    "gemini-error.bin": "d4177dfcf181a0b7e701f4b617fd50a1a4891a11fa86e0c83023539389ba2a31",
    "gemini-notify.bin": "63a632a71c02f4c2f69fdf287296efc244211e4abbe3bf193c09dff7dd74a261",
    "gemini-question-notify.bin": (
        "36edc8c8de62044fbd562078929902bd96634bd4968bc905ffa5960787562116"
    ),
    "gemini-question.bin": "0d29c3f3c4e913c694532710f17ec4b277b7734b2c5877721f0b3b722e031a23",
    "opencode-approve.bin": "6ef7d1a7fb32dd4efd156c78db4f0de63e0908735d6d64cad0c64a7e44e738ea",
    "opencode-deny.bin": "a6f18287c9cbd2c724f15683978c37da537c926e5070f92311c427537816f313",
    "opencode-error.bin": "b52f083ce75efbd755bb3ee8c9dda0088b1e4d8c12b77976f43a01ecef0c04ae",
    "opencode-question.bin": "0ff1b917188e29a956efb98f8458807d3971e3262ca9be653bebed9526aee541",
    "qwen-code-approve.bin": "c926d8130cfa9736e9bc6e1586f22c15151033511ceb9095c1ccfb2756078903",
    "qwen-code-deny.bin": "352754737d76eee23778af66cef7824a750972a02d6f98db3f58481dc49fa273",
    "qwen-code-error.bin": "95d025d65eabf368f501cbeb03a4557e7edc42c17e7f11134a91809bb14a2554",
    "qwen-code-notify.bin": "17f7c0b48eefde7fdd1a60913a2d6a9a51c2bcac737f2556afc513136405bc15",
    "qwen-code-question-notify.bin": (
        "3a1ef2b188b168bbcc6bdf13ecfcf333daf5624e85899801dac52c9271c9a47d"
    ),
    "qwen-code-question.bin": "a365fee685811a186dc65f0e2f3ab58a1309d6dda5d7cb22a74a97d8b468f8ea",
}


def test_the_captures_are_the_bytes_measured() -> None:
    found = {
        path.name: hashlib.sha256(path.read_bytes()).hexdigest()
        for path in sorted(AGENTS.glob("*.bin"))
    }
    assert found == SHA256
