package a2a

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"

	"go.yaml.in/yaml/v3"
)

// cardFile is what an --a2a-card file says of the agent.
type cardFile struct {
	Name        string      `yaml:"name"`
	Description string      `yaml:"description"`
	Skills      []skillFile `yaml:"skills"`
}

type skillFile struct {
	ID          string   `yaml:"id"`
	Name        string   `yaml:"name"`
	Description string   `yaml:"description"`
	Tags        []string `yaml:"tags"`
	Examples    []string `yaml:"examples"`
}

// LoadCard reads the agent card's name, description and skills from a
// YAML file (docs/a2a.md, "The card"). Unknown keys and a skill without
// an id, a name or a description are refused, naming the key.
func LoadCard(path string) (Config, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return Config{}, err
	}
	var f cardFile
	dec := yaml.NewDecoder(bytes.NewReader(raw))
	dec.KnownFields(true)
	if err := dec.Decode(&f); err != nil && !errors.Is(err, io.EOF) {
		return Config{}, fmt.Errorf("%s: %w", path, err)
	}
	cfg := Config{Name: f.Name, Description: f.Description}
	seen := map[string]bool{}
	for i, s := range f.Skills {
		for _, req := range []struct{ key, v string }{{"id", s.ID}, {"name", s.Name}, {"description", s.Description}} {
			if req.v == "" {
				return Config{}, fmt.Errorf("%s: skills[%d].%s: required", path, i, req.key)
			}
		}
		if seen[s.ID] {
			return Config{}, fmt.Errorf("%s: skills[%d].id: %q is given twice", path, i, s.ID)
		}
		seen[s.ID] = true
		tags := s.Tags
		if tags == nil {
			tags = []string{}
		}
		cfg.Skills = append(cfg.Skills, AgentSkill{ID: s.ID, Name: s.Name, Description: s.Description, Tags: tags, Examples: s.Examples})
	}
	return cfg, nil
}
