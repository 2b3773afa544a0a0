/// Fixed study texts for the local provider's quality checks.
enum Fixtures {
    static let photosynthesis = """
        # Photosynthesis

        Photosynthesis is the process by which green plants use sunlight to make glucose from carbon dioxide and water. \
        It takes place mainly in the leaves, inside small structures called chloroplasts. The green pigment in leaves is \
        called chlorophyll. Chlorophyll absorbs red and blue light and reflects green light, which is why most plants look green.

        ## The light-dependent reactions

        The light-dependent reactions happen in the thylakoid membranes of the chloroplast. Light energy splits water \
        molecules into oxygen, protons and electrons. The oxygen is released into the air as a by-product. The energy from \
        the electrons is stored in two carrier molecules, ATP and NADPH.

        ## The Calvin cycle

        The Calvin cycle is a series of reactions that takes place in the stroma of the chloroplast. It uses the ATP and \
        NADPH from the light-dependent reactions to turn carbon dioxide into glucose. The enzyme RuBisCO fixes carbon \
        dioxide at the start of the cycle. Because the Calvin cycle does not need light directly, it is sometimes called \
        the light-independent reactions.

        ## Why photosynthesis matters

        Almost all life on Earth depends on photosynthesis, directly or indirectly. Plants are producers because they make \
        their own food from sunlight. Animals get their energy by eating plants or other animals that ate plants. \
        Photosynthesis also keeps the level of oxygen in the atmosphere high enough for animals to breathe. Leaves are \
        green because they contain chlorophyll.
        """

    /// Two sentences of class admin first, then the content: a summary must not be "the first
    /// two sentences".
    static let frenchRevolution = """
        Welcome back, everyone. Please bring your notebooks to class on Thursday.

        The French Revolution was a period of radical political and social change in France that began in 1789. \
        Years of debt, poor harvests and rising bread prices had left many French people hungry and angry with King Louis XVI. \
        In May 1789 the king called the Estates-General, an assembly of the clergy, the nobility and the common people. \
        The common people, known as the Third Estate, broke away and declared themselves the National Assembly. \
        On 14 July 1789 crowds in Paris stormed the Bastille, a royal fortress and prison that stood for the king's power. \
        The National Assembly abolished feudal privileges and issued the Declaration of the Rights of Man and of the Citizen. \
        The revolution turned violent during the Reign of Terror, when thousands of people were executed by the guillotine. \
        Maximilien Robespierre led the Committee of Public Safety during the Terror until he was executed in 1794. \
        The revolution ended in 1799 when Napoleon Bonaparte seized power in a coup. \
        Its ideas of liberty, equality and the rights of citizens spread across Europe and shaped modern democracies.
        """

    static let glossary = """
        Key terms

        Mitosis: cell division that produces two identical daughter cells.
        Meiosis: cell division that produces four sex cells with half the chromosomes.
        - Osmosis – the movement of water across a membrane from a dilute to a concentrated solution.
        """
}
