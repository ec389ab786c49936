package org.ziggurat.client;

import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.junit.jupiter.api.Test;

/** The README's Java code is the starter bot's, word for word: the bot the other tests run. */
class ReadmeTest {
  @Test
  void readmeCodeIsTheStarterBots() throws Exception {
    List<String> readme = Files.readAllLines(Path.of("README.md"));
    String bot = Files.readString(Path.of("src/main/java/org/ziggurat/examples/RandomBot.java"));
    int blocks = 0;
    for (int i = 0; i < readme.size(); i++) {
      if (readme.get(i).strip().equals("```java")) {
        List<String> block = new ArrayList<>();
        for (i++; !readme.get(i).strip().equals("```"); i++) {
          block.add(readme.get(i));
        }
        String text = String.join("\n", block);
        assertTrue(bot.contains(text), "README block not in RandomBot.java:\n" + text);
        blocks++;
      }
    }
    assertTrue(blocks >= 2, "the README shows the bot");
    String text = String.join("\n", readme);
    for (String page : List.of("docs/rules/kabaleo.md", "docs/rules/pylos.md", "docs/protocol.md")) {
      assertTrue(text.contains("../../" + page), "the README links " + page);
      assertTrue(Files.exists(Path.of("../..", page)), page + " exists");
    }
  }
}
